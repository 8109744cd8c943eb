"""Event time and processing time: watermarks, their valves, timestamps and timer services."""
