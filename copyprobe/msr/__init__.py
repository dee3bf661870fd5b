"""The Many-Shot Regurgitation study: prompts, scoring, statistics, figures and tables."""
