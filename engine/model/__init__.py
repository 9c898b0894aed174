"""The models a pipeline splits: the built-in gpt and mlp, a user's nn.Sequential, the split into stages."""
