"""Lambda entry points. Each is thin: parse the event, call the library, return a small result."""
