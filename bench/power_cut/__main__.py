"""`python -m bench.power_cut BACKING MOUNT_POINT`: one mount's server (see `_server`)."""

import sys

from ._server import main

main(sys.argv[1:])
