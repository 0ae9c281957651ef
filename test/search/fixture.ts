import type { Catalog, ToolEntry } from '../../src/catalog/index.js';
import { sourceKeyOf } from '../../src/search/index.js';

type Spec = [name: string, description: string, params?: string[]];

/** An MCP tool entry as the catalog builds it (untrusted text). */
export function mcpTool(server: string, [name, description, params = []]: Spec): ToolEntry {
  return {
    id: `mcp:${server}:${name}`,
    source: 'mcp',
    owner: server,
    sourceName: server,
    name,
    description,
    inputSchema: { type: 'object', properties: Object.fromEntries(params.map((p) => [p, { type: 'string' }])) },
    origin: 'mcp',
    trusted: false,
  };
}

const SERVERS: Record<string, Spec[]> = {
  github: [
    ['list_issues', 'List issues in a GitHub repository with filtering options', ['owner', 'repo', 'state']],
    ['create_issue', 'Create a new issue in a GitHub repository', ['owner', 'repo', 'title', 'body']],
    ['add_issue_comment', 'Add a comment to an existing issue', ['owner', 'repo', 'issue_number', 'body']],
    ['create_pull_request', 'Create a new pull request in a GitHub repository', ['owner', 'repo', 'head', 'base']],
    ['search_code', 'Search for code across GitHub repositories', ['q']],
    ['list_commits', 'Get list of commits of a branch in a GitHub repository', ['owner', 'repo', 'sha']],
    ['create_branch', 'Create a new branch in a GitHub repository', ['owner', 'repo', 'branch']],
    [
      'get_file_contents',
      'Get the contents of a file or directory from a GitHub repository',
      ['owner', 'repo', 'path'],
    ],
  ],
  gitlab: [
    ['list_issues', 'List issues in a GitLab project', ['project_id']],
    ['create_issue', 'Create a new issue in a GitLab project', ['project_id', 'title']],
    ['list_branches', 'List the branches of a GitLab project', ['project_id']],
    ['list_protected_branches', 'List the protected branches of a GitLab project', ['project_id']],
    ['create_merge_request', 'Create a new merge request in a GitLab project', ['project_id', 'source_branch']],
    ['list_pipelines', 'List pipelines in a GitLab project', ['project_id']],
    ['get_file_contents', 'Get the contents of a file from a GitLab project', ['project_id', 'file_path']],
  ],
  slack: [
    ['slack_post_message', 'Post a new message to a Slack channel', ['channel_id', 'text']],
    ['slack_reply_to_thread', 'Reply to a specific message thread in Slack', ['channel_id', 'thread_ts', 'text']],
    ['slack_list_channels', 'List public channels in the workspace', ['limit']],
    ['slack_get_channel_history', 'Get recent messages from a channel', ['channel_id']],
    ['slack_add_reaction', 'Add a reaction emoji to a message', ['channel_id', 'timestamp', 'reaction']],
    ['slack_get_users', 'Get a list of all users in the workspace', []],
  ],
  filesystem: [
    ['read_file', 'Read the complete contents of a file from the file system', ['path']],
    ['write_file', 'Create a new file or overwrite an existing file with new content', ['path', 'content']],
    ['list_directory', 'Get a detailed listing of all files and directories in a specified path', ['path']],
    ['create_directory', 'Create a new directory or ensure a directory exists', ['path']],
    ['move_file', 'Move or rename files and directories', ['source', 'destination']],
    ['search_files', 'Recursively search for files and directories matching a pattern', ['path', 'pattern']],
    ['get_file_info', 'Retrieve detailed metadata about a file or directory', ['path']],
  ],
  calendar: [
    ['list-events', 'List events from a calendar in a time range', ['calendarId', 'timeMin', 'timeMax']],
    ['create-event', 'Create a new calendar event', ['calendarId', 'summary', 'start', 'end']],
    ['delete-event', 'Delete an event from a calendar', ['calendarId', 'eventId']],
    ['update-event', 'Update an existing calendar event', ['calendarId', 'eventId']],
    ['list-calendars', 'List all available calendars', []],
    ['get-freebusy', 'Query free/busy information for calendars', ['calendars', 'timeMin', 'timeMax']],
  ],
  browser: [
    ['browser_navigate', 'Navigate to a URL', ['url']],
    ['browser_click', 'Perform click on a web page element', ['element', 'ref']],
    ['browser_take_screenshot', 'Take a screenshot of the current page', ['filename']],
    ['browser_type', 'Type text into an editable element', ['element', 'text']],
    ['browser_network_requests', 'Returns all network requests since loading the page', []],
  ],
};

/** ~40 tools of six MCP servers, with names that repeat across servers (list_issues, get_file_contents). */
export function fixtureEntries(): ToolEntry[] {
  return Object.entries(SERVERS).flatMap(([server, specs]) => specs.map((s) => mcpTool(server, s)));
}

/** A catalog with per-source digests made from the entries' ids and descriptions (test stand-in for catalog/). */
export function catalogOf(entries: ToolEntry[]): Catalog {
  const sourceFingerprints: Record<string, string> = {};
  for (const e of entries) {
    const k = sourceKeyOf(e);
    sourceFingerprints[k] = digest(`${sourceFingerprints[k] ?? ''}|${e.id}=${e.description}`);
  }
  const fingerprint = digest(
    Object.entries(sourceFingerprints)
      .sort()
      .map(([k, v]) => `${k}:${v}`)
      .join(';'),
  );
  return { entries, fingerprint, sourceFingerprints, sources: [] };
}

function digest(s: string): string {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
  return `${s.length.toString(36)}-${h.toString(36)}`;
}
