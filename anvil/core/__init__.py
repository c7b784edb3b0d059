"""The engine: loop, model adapter, tools, policy, sessions. Never imports a UI library; litellm only lazily."""
