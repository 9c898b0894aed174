"""Imported last into the forkserver every rank is forked from: its heap, torch's included,
frozen once, so no rank's garbage collector walks it again.

A rank collects once before its first step and then only between steps
(``pipelab.engine.runtime.worker.collected_between_steps``). That first collection walked
every object the forkserver had imported, torch's included: about 290,000 objects and
0.15 s of CPU per rank on our 2-core machines, where 4 ranks share the cores (the
forkserver's imports, then one collection: ``PYTHONPATH=. python -c "import gc, time,
torch._dynamo, pipelab.engine.runtime.worker; t = time.process_time(); gc.collect();
print(len(gc.get_objects()), time.process_time() - t)"``). Objects
frozen before a fork stay frozen in the child (gc.freeze: "call gc.freeze() right before
fork()"), so the rank's collection now walks only what the rank itself made.
"""

import gc

gc.collect()
gc.freeze()
