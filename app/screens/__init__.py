"""One module per kind of screen: a lesson, the playground, the recap, My runs, the papers, the instructor."""
