from lwtool.cli.entry import main

main()
