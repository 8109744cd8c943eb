"""User functions: how a spec references them, the built-in library, and functions shipped by
value. Resolved by name at compile time, imported only where they run."""
