import sys

from ._launcher import main

main(sys.argv[1:])
