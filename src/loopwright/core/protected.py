"""The protected names: folders and files that configure tools which later run code, or hold
credentials. One list for the permission gate (`policy/pathrules.protected`) and the sandbox
(`sandbox/protect`), so what the gate asks about is what the sandbox keeps read-only."""

from __future__ import annotations

__all__ = ["PROTECTED_DIRS", "PROTECTED_FILES", "PROTECTED_UNDER_CONFIG"]

# Directories whose contents configure tools that later run code, or hold credentials.
PROTECTED_DIRS = frozenset({".git", ".loopwright", ".claude", ".vscode", ".idea", ".husky", ".cargo",
                            ".devcontainer", ".yarn", ".mvn", ".ssh", ".gnupg", ".aws", ".kube", ".docker"})
# ~/.config/git, ~/.config/fish, user services and programs started at log-in
PROTECTED_UNDER_CONFIG = frozenset({"git", "fish", "systemd", "autostart", "environment.d"})
PROTECTED_FILES = frozenset({
    ".gitconfig", ".gitmodules", ".gitattributes", ".git-credentials", ".bashrc", ".bash_profile",
    ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".login", ".mkshrc", ".xprofile", ".xinitrc",
    ".xsession", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
    ".kshrc", ".cshrc", ".tcshrc", ".inputrc", ".envrc", ".npmrc", ".yarnrc", ".yarnrc.yml", "bunfig.toml",
    ".bazelrc", ".pre-commit-config.yaml", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".mcp.json",
    ".claude.json", ".pypirc", ".netrc", ".curlrc", ".wgetrc", ".vimrc", ".exrc",
})
