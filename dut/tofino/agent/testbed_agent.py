# placeholder: replaced by the agent implementation
