"""Event time and processing time: durations, watermarks, their valves and timestamps."""
