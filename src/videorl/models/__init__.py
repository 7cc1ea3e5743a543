"""videorl.models"""
