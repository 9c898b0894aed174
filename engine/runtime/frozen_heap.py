"""Imported last into the forkserver every rank is forked from: its heap, torch's included,
frozen once, so no rank's garbage collector walks it again.

A rank collects once before its first step and then only between steps
(``pipelab.engine.runtime.worker.collected_between_steps``). That first collection walked
every object the forkserver had imported, about 290,000 of them, 0.15 s of CPU per rank:
with 4 ranks on 2 cores, a third of a launch's set-up wall time on a lesson's Run. Objects
frozen before a fork stay frozen in the child (gc.freeze: "call gc.freeze() right before
fork()"), so the rank's collection now walks only what the rank itself made.
"""

import gc

gc.collect()
gc.freeze()
