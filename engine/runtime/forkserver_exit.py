"""Imported into the forkserver every rank is forked from (rank_processes.mp_context preloads it):
when the forkserver ends, it removes its launcher's multiprocessing folder (pymp-*, which holds
the forkserver's socket).

The launcher removes that folder itself when it exits cleanly (multiprocessing's own exit
handler). A launcher killed outright (SIGKILL; a Ray worker as its cluster stops) cannot, and the
folder stayed in the host's temp dir, one per launcher killed. Its forkserver outlives it: it ends
once the launcher and every rank forked from it are gone (multiprocessing.forkserver.main raises
SystemExit), and Python's exit handlers run then. A rank forked from it ends with os._exit and
runs none, so only the forkserver removes the folder, and only after its last rank.
"""

import atexit
import os
import shutil

from pipelab.engine.runtime.rank_processes import FORKSERVER_FOLDER_ENV, MULTIPROCESSING_FOLDER_PREFIX

_folder = os.environ.get(FORKSERVER_FOLDER_ENV)
if _folder and os.path.basename(_folder).startswith(MULTIPROCESSING_FOLDER_PREFIX):  # never another folder
    atexit.register(shutil.rmtree, _folder, True)
