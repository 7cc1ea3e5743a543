"""videorl.trainer"""
