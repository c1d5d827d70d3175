"""The package's exception."""


class AnvilError(Exception):
    """The evaluation could not run: a bad config or dataset (anvil-host's
    exit 2), no binary, or a run that ended without a summary. Its message
    is anvil-host's own, naming file, line and field."""

    def __init__(self, message, exit_code=None, stderr=""):
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr = stderr
