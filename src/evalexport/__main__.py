import sys

from evalexport.cli import main

sys.exit(main())
