"""bcn-bridge: brings BCN bots and humans on chat platforms into one conversation."""

__version__ = "0.1.0"
