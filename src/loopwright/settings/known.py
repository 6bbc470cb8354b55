"""Names a settings file may use: the keys, hook events and tools loopwright acts on, and the
ones Claude Code knows but loopwright does not use (accepted silently, so a project set up for
Claude Code works as it is). Data only; `settings.check` reports names in neither list.

Claude Code's names: its settings schema on SchemaStore (`claude-code-settings.json`, every key
it has listed from 2025-06 to 2026-08) and its hooks reference (`reference/claude-code-spec.md`)."""

from __future__ import annotations

from ..core.hookevents import EVENTS, FOREIGN_EVENTS

# Top-level keys loopwright reads (settings/__init__.py, `Settings`).
LOOPWRIGHT_KEYS = frozenset({"hooks", "permissions", "model", "fallbackModel", "env", "disableAllHooks", "sandbox",
                             "hookFailurePolicy", "memoryFiles", "claudeMdExcludes"})

CLAUDE_CODE_KEYS = frozenset("""
$schema advisorModel agent agentPushNotifEnabled allowAllClaudeAiMcps allowManagedHooksOnly
allowManagedMcpServersOnly allowManagedPermissionRulesOnly allowedChannelPlugins allowedHttpHookUrls
allowedMcpServers alwaysThinkingEnabled apiKeyHelper askUserQuestionTimeout attribution autoCompactEnabled
autoCompactWindow autoConnectIde autoInstallIdeExtension autoMemoryDirectory autoMemoryEnabled autoMode
autoScrollEnabled autoUpdaterStatus autoUpdatesChannel availableModels awaySummaryEnabled awsAuthRefresh
awsCredentialExport axScreenReader blockedMarketplaces browserExternalPageTools channelsEnabled claudeMd
claudeMdExcludes cleanupPeriodDays companyAnnouncements defaultShell deniedMcpServers diffTool
disableAgentView disableAllHooks disableArtifact disableAutoMode disableBrowserExternalNavigation
disableBundledSkills disableClaudeAiConnectors disableDeepLinkRegistration disableMobileSimulatorTools
disableRemoteControl disableSideloadFlags disableSkillShellExecution disableWorkflows disabledMcpjsonServers
editorMode effortLevel emojiCompletionEnabled enableAllProjectMcpServers enableArtifact enabledMcpjsonServers
enabledPlugins enforceAvailableModels env externalEditorContext extraKnownMarketplaces fallbackModel fastMode
fastModePerSessionOptIn feedbackSurveyRate fileCheckpointingEnabled fileSuggestion footerLinksRegexes
forceLoginGatewayUrl forceLoginMethod forceLoginOrgUUID forceRemoteSettingsRefresh gcpAuthRefresh hooks
httpHookAllowedEnvVars includeCoAuthoredBy includeGitInstructions inputNeededNotifEnabled language learnMode
leftArrowOpensAgents managedMcpServers maxSkillDescriptionChars minimumVersion model modelOverrides
otelHeadersHelper outputStyle parentSettingsBehavior permissionExplainerEnabled permissions plansDirectory
pluginConfigs pluginSuggestionMarketplaces pluginTrustMessage policyHelper prUrlTemplate preferredNotifChannel
prefersReducedMotion processWrapper remoteControlAtStartup requireCoworkFullVmSandbox requiredMaximumVersion
requiredMinimumVersion respectGitignore respondToBashCommands sandbox showClearContextOnPlanAccept
showThinkingSummaries showTurnDuration skillListingBudgetFraction skillListingMaxDescChars skillOverrides
skipDangerousModePermissionPrompt skipWebFetchPreflight skippedMarketplaces skippedPlugins spinnerTipsEnabled
spinnerTipsOverride spinnerVerbs sshConfigs sshHostAllowlist statusLine strictKnownMarketplaces
strictPluginOnlyCustomization subagentStatusLine syntaxHighlightingDisabled teammateDefaultModel teammateMode
terminalProgressBarEnabled theme tui useAutoModeDuringPlan verbose viewMode vimInsertModeRemaps voice
voiceEnabled wheelScrollAccelerationEnabled workflowKeywordTriggerEnabled workflowSizeGuideline worktree
wslInheritsWindowsSettings
""".split())

PERMISSION_KEYS = frozenset({"allow", "ask", "deny", "defaultMode", "additionalDirectories",
                             "disableBypassPermissionsMode", "disableAutoMode"})
# Modes Claude Code accepts that loopwright does not have (yet): ignored with a warning.
CLAUDE_CODE_ONLY_MODES = frozenset({"delegate"})

# Hook events, from their one table (core/hookevents.py): those Claude Code fires that loopwright
# does not; those whose hooks take no matcher (one there would be ignored, so the hooks would run
# every time); those whose matcher sees tool names; and what a matcher is compared with, for
# events where the values are a closed set.
CLAUDE_CODE_ONLY_EVENTS = frozenset(FOREIGN_EVENTS)
NO_MATCHER_EVENTS = frozenset([*(e for e, facts in EVENTS.items() if facts.matcher is None),
                               *(e for e, field in FOREIGN_EVENTS.items() if field is None)])
TOOL_EVENTS = frozenset([*(e for e, facts in EVENTS.items() if facts.tool),
                         *(e for e, field in FOREIGN_EVENTS.items() if field == "tool_name")])
MATCHER_VALUES = {e: facts.matcher_values for e, facts in EVENTS.items() if facts.matcher_values is not None}

# Tools Claude Code has (its permission-rule names, old and new); loopwright's own come from
# loopwright.tools. `mcp__server__tool` names are always accepted.
CLAUDE_CODE_TOOLS = frozenset("""
Agent Task Bash BashOutput Cd Edit MultiEdit ExitPlanMode EnterPlanMode Glob Grep KillShell LSP Monitor
NotebookEdit NotebookRead PowerShell Read Skill SlashCommand TaskCreate TaskGet TaskList TaskOutput TaskStop
TaskUpdate TodoWrite ToolSearch WebFetch WebSearch Write AskUserQuestion CronCreate CronList CronDelete
""".split())
LOOPWRIGHT_EXTRA_TOOLS = frozenset({"StructuredOutput", "ScheduleWakeup", "CronCreate", "CronList", "CronDelete"})
