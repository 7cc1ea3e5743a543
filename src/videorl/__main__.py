from videorl.cli import main

main()
