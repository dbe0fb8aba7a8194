from ocmem.cli import main

main()
