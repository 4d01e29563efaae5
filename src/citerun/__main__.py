from citerun.cli.main import main

main()
