import sys

from unohil.harness.cli.app import main

sys.exit(main())
