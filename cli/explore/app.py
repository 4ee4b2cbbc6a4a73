"""The explorer's Textual app: a savepoint already loaded, its operators the first screen."""

from __future__ import annotations

from textual.app import App

from statectl.statefmt.model import Savepoint

from .screens import HelpScreen, OperatorsScreen


class ExploreApp(App):
    TITLE = "statectl explore"
    CSS = """
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #status { height: 1; background: $panel; padding: 0 1; }
    RowsTable { height: 1fr; }
    """

    def __init__(self, savepoint: Savepoint):
        super().__init__()
        self.savepoint = savepoint

    def on_mount(self) -> None:
        where = self.savepoint.location or ""
        self.push_screen(OperatorsScreen(f"{where}  (savepoint {self.savepoint.savepoint_id})"))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())
