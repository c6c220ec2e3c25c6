"""``python -m incident_responder.cli``: the same as the ``responder`` command."""

from incident_responder.cli.commands import main

raise SystemExit(main())
