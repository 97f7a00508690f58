from lwtool.cli.app import main

main()
