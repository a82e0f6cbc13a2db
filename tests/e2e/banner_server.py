"""sdk_server.py over stdio after a banner line on stdout, as many servers print one
(``Server running on stdio``: not MCP, which a client skips)."""

import os
import runpy
import sys
from pathlib import Path

os.write(1, b"Server running on stdio\n")
sys.argv = [str(Path(__file__).with_name("sdk_server.py"))]
runpy.run_path(sys.argv[0], run_name="__main__")
