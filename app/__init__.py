"""The program: CLI entry, window + GL context, UI panels, modes, settings, exports."""
