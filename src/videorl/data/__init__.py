"""videorl.data"""
