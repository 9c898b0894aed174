"""What the papers predict: closed forms, the simulator, the rule checks, the breakdown of a gap."""
