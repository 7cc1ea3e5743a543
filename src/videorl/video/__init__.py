"""videorl.video"""
