from ocmem.entry import main

main()
