"""videorl.eval"""
