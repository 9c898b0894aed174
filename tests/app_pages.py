"""Opening the app's pages in AppTest by address, as a browser does (/<url_path>).

AppTest.switch_page takes a page's file, but a lesson's page is a callable built from the
catalog (app/navigation.py), with no file of its own. Streamlit keys every page, file or
callable, by the hash of its url_path (st.Page._script_hash); this sets the page AppTest asks
for on its next run to that hash, as switch_page does for a file's page.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash


def switch_to(at: AppTest, url_path: str) -> AppTest:
    """Ask for the page at /<url_path> on the next ``at.run()``; returns ``at``."""
    at._page_hash = calc_hash(url_path)
    return at


def switch(at: AppTest, page: str) -> AppTest:
    """Ask for ``page`` on the next run: a page file (``page_scripts/recap.py``), or an address
    (a lesson's slug, ``gpipe``); returns ``at``."""
    return at.switch_page(page) if page.endswith(".py") else switch_to(at, page)
