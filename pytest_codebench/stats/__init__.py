"""Pure statistics: bounds, intervals and tests behind every claim the plugin prints. Imports nothing of the plugin."""
