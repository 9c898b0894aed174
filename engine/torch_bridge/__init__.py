"""The bridge to torch.distributed.pipelining: its CSV format and a run on its runtime."""
