// The agent's tools a permission policy may name (core/config AgentTools),
// plus the pseudo-tool for opening terminals, shells and scripts, which
// follows run_shell unless a policy names it. A Go test keeps these in step
// with the helper's.
export const AGENT_TOOLS = [
  'screenshot', 'mouse_click', 'mouse_move', 'mouse_drag', 'scroll',
  'keyboard_type', 'keyboard_key', 'open_app', 'open_file', 'open_url',
  'run_shell', 'read_file', 'write_file', 'list_directory', 'move_file',
  'traverse_accessibility_tree', 'get_frontmost_app', 'list_running_apps',
  'clipboard_read', 'clipboard_write', 'wait',
  'ask_text_question', 'ask_multiple_choice', 'request_user_intervention',
  'use_credential',
];

export const OPEN_TERMINAL = 'open_terminal';

// The host's own tools (core/config HostToolNames): web search and reading
// (internet-mode tasks), skills and subagents. An MCP server's tools are
// named mcp__SERVER__TOOL, all of them mcp__SERVER__*.
export const HOST_TOOLS = ['web_search', 'read_webpage', 'use_skill', 'spawn_subagent'];

/** The policy name of all of an MCP server's tools. */
export const mcpTools = (server) => `mcp__${server}__*`;
