"""Everything that moves an event: the sink and publisher (events.py), the fan-out hub
(fanout.py), the WebSocket consumer and its routing (consumers.py, routing.py), the
running-turn registry (turns.py) and the after-response middleware (middleware.py)."""
