import sys

from unohil.harness.cli import main

sys.exit(main())
