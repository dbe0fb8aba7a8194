from ocmem.cli.entry import main

main()
