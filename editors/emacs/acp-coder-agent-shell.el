;;; acp-coder-agent-shell.el --- acp-coder for agent-shell -*- lexical-binding: t; -*-

;;; Commentary:
;;
;; Adds acp-coder to agent-shell (https://github.com/xenodium/agent-shell).
;; Load this file after agent-shell, then M-x acp-coder-agent-shell-start,
;; or pick "acp-coder" when `agent-shell' asks which agent to start.
;;
;; agent-shell starts agents with a minimal environment unless told to
;; inherit it; `:inherit-env t' below passes your Emacs environment
;; through, HOME included, so acp-coder finds the login saved by
;; `acp-coder login'.

;;; Code:

(require 'cl-lib)
(require 'agent-shell)

(defcustom acp-coder-agent-shell-command '("acp-coder")
  "Command and arguments that start acp-coder as an ACP agent."
  :type '(repeat string)
  :group 'agent-shell)

(defcustom acp-coder-agent-shell-environment
  ;; Only to override the saved login for this editor, add pairs such as
  ;; "OPENAI_BASE_URL" "http://127.0.0.1:11434/v1" "ACP_CODER_MODEL" "qwen3-coder".
  (agent-shell-make-environment-variables :inherit-env t)
  "Environment variables for acp-coder."
  :type '(repeat string)
  :group 'agent-shell)

(defun acp-coder-agent-shell--make-client (buffer)
  "Create the ACP client for acp-coder with BUFFER as context."
  (if (fboundp 'agent-shell--make-acp-client)
      (agent-shell--make-acp-client
       :command (car acp-coder-agent-shell-command)
       :command-params (cdr acp-coder-agent-shell-command)
       :environment-variables acp-coder-agent-shell-environment
       :context-buffer buffer)
    (acp-make-client
     :command (car acp-coder-agent-shell-command)
     :command-params (cdr acp-coder-agent-shell-command)
     :environment-variables acp-coder-agent-shell-environment
     :context-buffer buffer)))

(defun acp-coder-agent-shell-make-config ()
  "The agent-shell configuration of acp-coder."
  (agent-shell-make-agent-config
   :identifier 'acp-coder
   :mode-line-name "acp-coder"
   :buffer-name "acp-coder"
   :shell-prompt "acp-coder> "
   :shell-prompt-regexp "acp-coder> "
   :default-session-mode-id (lambda () "ask")
   :client-maker (lambda (buffer) (acp-coder-agent-shell--make-client buffer))
   :install-instructions "Install acp-coder as its README says (it must be on PATH), then run `acp-coder login' once."))

(defun acp-coder-agent-shell-start ()
  "Start an agent-shell running acp-coder."
  (interactive)
  (agent-shell-start :config (acp-coder-agent-shell-make-config)))

(when (listp agent-shell-agent-configs)
  (add-to-list 'agent-shell-agent-configs (acp-coder-agent-shell-make-config) t))

(provide 'acp-coder-agent-shell)

;;; acp-coder-agent-shell.el ends here
