"""``python -m ihcube.verify.formal``, as before the command line moved: the same as
``ihcube formal`` (:mod:`ihcube.cli.formal`), for scripts and Makefiles not yet changed."""

import sys

from ...cli.formal import main

sys.exit(main())
