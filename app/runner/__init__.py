"""Runs behind the pages: the server-wide queue, a page's submitted runs, the stored results."""
