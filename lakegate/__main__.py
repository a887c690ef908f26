import sys

from lakegate.cli import main

sys.exit(main())
