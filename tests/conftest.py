import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import os

#: A fixed redaction key for every test and every mcptap the tests spawn
#: (inherited through the environment): placeholders are deterministic, and
#: no test writes a key into the real user config directory.
TEST_REDACT_KEY = "6d637074617020746573742072656461637469" + "6f6e206b6579203230323621"
os.environ["MCPTAP_REDACT_KEY"] = TEST_REDACT_KEY
