"""The copyright-compliance study: materials rendered to images, prompts, scoring and analysis."""
