from citerun.cli import main

main()
