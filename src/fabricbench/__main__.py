from fabricbench.cli import main
main()
