import sys

from perfguard.cli import main

sys.exit(main())
