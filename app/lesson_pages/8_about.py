"""About: how PipeLab measures, and how to read the charts."""

import streamlit as st

from app.charts import legend_html
from app.runs import get_runner
from engine.config import Limits

st.title("About: the clocks and the charts")
st.markdown("""
Every run starts one real process per pipeline device and trains a small model with
`torch.distributed` (gloo on CPU). Each process records what it did on **two clocks**:

- **device clock**: each action's own thread CPU time; the engine's own work between
  actions (posting messages, bookkeeping) moves it on too, as thin gaps that are not busy
  time; every message carries the sender's device-clock stamp, and the receiver's clock
  becomes `max(own clock, stamp + link cost)`.
  This is what each device would see with a core of its own: real data, real dependency
  order, real op durations, without the contention of the shared host.
- **wall clock**: what really happened on this shared 2-core host. With more processes than
  cores, the operating system takes turns, so wall-clock bubbles are larger than theory.
- **simulated**: the simulator plays the same schedule on a cost model fed with the run's
  measured mean per-stage costs (and host time). If the device clock and the simulation agree, the schedule
  behaves as theory says. Where the device clock runs longer, look at the first forward of
  each step: an action that waited for its input starts with cold caches and takes longer
  than the stage's mean. Steps also vary, and an action waits for the slower of its
  inputs, so mean costs predict a little less than each step had: the **bubble breakdown**'s
  last simulated row plays each step with its own costs and meets the device clock, which is
  this same model computed by the ranks.

Runs from every student go through one queue on the server, so measurements do not
disturb each other; identical finished runs are shown again from a cache.
""")
st.subheader("Colours")
st.markdown(legend_html(),
            unsafe_allow_html=True)
limits = Limits.from_env()
running, queued = get_runner().counts()
st.subheader("This server")
st.markdown(f"At most {get_runner().max_concurrent} run(s) at once; now {running} running, {queued} queued.  \n"
            f"Limits: {limits.max_stages} stages, {limits.max_microbatches} micro-batches, {limits.max_layers} layers, "
            f"hidden {limits.max_hidden}, micro-batch size {limits.max_microbatch_size}, {limits.max_steps} steps, "
            f"{limits.max_seconds:g} s per run.")
