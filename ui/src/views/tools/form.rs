//! The server form's model: its fields as typed, made from a saved configuration and
//! turned back into one (with header values apart, for the keychain). Pure, unit-tested.

use std::collections::BTreeMap;

use art_types::approval::ToolPolicy;
use art_types::mcp::{
    DEFAULT_CALL_TIMEOUT_SECS, DEFAULT_RESULT_LIMIT, McpOAuth, McpServerConfig, McpTransport,
    McpTransportKind, is_secret_name,
};

/// The form's fields as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// Server name.
    pub name: String,
    /// Which transport the form shows.
    pub transport: McpTransportKind,
    /// Stdio: the command.
    pub command: String,
    /// Stdio: one argument per line.
    pub args: String,
    /// Stdio: `NAME=value` per line.
    pub env: String,
    /// Stdio: working directory.
    pub cwd: String,
    /// HTTP: the endpoint.
    pub url: String,
    /// HTTP: `Name: value` per line (`Name` alone keeps the stored value).
    pub headers: String,
    /// Call timeout in seconds.
    pub timeout: String,
    /// Result limit in characters.
    pub limit: String,
    /// Started with the app.
    pub enabled: bool,
    /// What happens before one of its tools runs, unless a thread says otherwise.
    pub policy: ToolPolicy,
    /// HTTP sign-in: a client id given by the authorization server.
    pub client_id: String,
    /// HTTP sign-in: a new client secret (empty keeps the stored one).
    pub client_secret: String,
    /// HTTP sign-in: whether a client secret is stored.
    pub has_client_secret: bool,
    /// HTTP sign-in: scopes to ask for, separated by spaces.
    pub scopes: String,
    /// HTTP sign-in: a Client ID Metadata Document's address.
    pub metadata_url: String,
}

/// What the form saves: the configuration, new header values, a new client secret.
pub type Request = (McpServerConfig, BTreeMap<String, String>, Option<String>);

impl Default for Form {
    fn default() -> Self {
        Self {
            name: String::new(),
            transport: McpTransportKind::Stdio,
            command: String::new(),
            args: String::new(),
            env: String::new(),
            cwd: String::new(),
            url: String::new(),
            headers: String::new(),
            timeout: DEFAULT_CALL_TIMEOUT_SECS.to_string(),
            limit: DEFAULT_RESULT_LIMIT.to_string(),
            enabled: true,
            policy: ToolPolicy::Ask,
            client_id: String::new(),
            client_secret: String::new(),
            has_client_secret: false,
            scopes: String::new(),
            metadata_url: String::new(),
        }
    }
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty())
}

impl Form {
    /// The form for a saved server (header values are not shown: they stay in the keychain).
    pub fn from_config(config: &McpServerConfig) -> Self {
        let mut form = Self {
            name: config.name.clone(),
            timeout: config.timeout_secs.to_string(),
            limit: config.result_limit.to_string(),
            enabled: config.enabled,
            policy: config.tool_policy,
            ..Self::default()
        };
        match &config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                secret_env,
            } => {
                form.command = command.clone();
                form.args = args.join("\n");
                // A secret's name alone: its value stays in the keychain.
                form.env = env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .chain(secret_env.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("\n");
                form.cwd = cwd.clone().unwrap_or_default();
            }
            McpTransport::Http { url, headers } => {
                form.transport = McpTransportKind::Http;
                form.url = url.clone();
                form.headers = headers.join("\n");
                let oauth = &config.oauth;
                form.client_id = oauth.client_id.clone().unwrap_or_default();
                form.has_client_secret = oauth.client_secret;
                form.scopes = oauth.scopes.join(" ");
                form.metadata_url = oauth.client_metadata_url.clone().unwrap_or_default();
            }
        }
        form
    }

    /// The configuration, the new header values and a new client secret, or the field
    /// that is wrong.
    pub fn to_request(&self) -> Result<Request, (String, String)> {
        let number = |text: &str, field: &str| {
            text.trim()
                .parse::<u32>()
                .map_err(|_| (field.to_owned(), "a whole number".to_owned()))
        };
        let mut values = BTreeMap::new();
        let transport = if self.transport == McpTransportKind::Http {
            let mut names = Vec::new();
            for line in lines(&self.headers) {
                match line.split_once(':') {
                    Some((name, value)) => {
                        names.push(name.trim().to_owned());
                        values.insert(name.trim().to_owned(), value.trim().to_owned());
                    }
                    None => names.push(line.to_owned()),
                }
            }
            McpTransport::Http {
                url: self.url.trim().to_owned(),
                headers: names,
            }
        } else {
            let (mut env, mut secret_env) = (BTreeMap::new(), Vec::new());
            for line in lines(&self.env) {
                match line.split_once('=') {
                    Some((name, value)) => {
                        env.insert(name.trim().to_owned(), value.to_owned());
                    }
                    // A secret's name alone keeps its stored value.
                    None if is_secret_name(line) => secret_env.push(line.to_owned()),
                    None => {
                        return Err(("env".to_owned(), format!("write `{line}` as NAME=value")));
                    }
                }
            }
            McpTransport::Stdio {
                command: self.command.trim().to_owned(),
                args: lines(&self.args).map(str::to_owned).collect(),
                env,
                cwd: Some(self.cwd.trim().to_owned()).filter(|c| !c.is_empty()),
                secret_env,
            }
        };
        let mut config = McpServerConfig::new(self.name.trim(), transport);
        config.enabled = self.enabled;
        config.timeout_secs = number(&self.timeout, "timeoutSecs")?;
        config.result_limit = number(&self.limit, "resultLimit")?;
        config.tool_policy = self.policy;
        let mut secret = None;
        if self.transport == McpTransportKind::Http {
            let client_id = Some(self.client_id.trim().to_owned()).filter(|c| !c.is_empty());
            let typed = Some(self.client_secret.trim().to_owned()).filter(|c| !c.is_empty());
            if typed.is_some() && client_id.is_none() {
                return Err((
                    "oauth".to_owned(),
                    "a client secret needs the client id it was issued with".to_owned(),
                ));
            }
            config.oauth = McpOAuth {
                client_secret: client_id.is_some() && (typed.is_some() || self.has_client_secret),
                client_id,
                scopes: self.scopes.split_whitespace().map(str::to_owned).collect(),
                client_metadata_url: Some(self.metadata_url.trim().to_owned())
                    .filter(|u| !u.is_empty()),
            };
            secret = typed;
        }
        Ok((config, values, secret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_form_becomes_its_config_and_back() {
        let form = Form {
            name: "files".into(),
            command: "npx".into(),
            args: "-y\n@modelcontextprotocol/server-filesystem\n/home/me/My Notes\n".into(),
            env: "TZ=UTC\nEMPTY=".into(),
            ..Form::default()
        };
        let (config, values, _) = form.to_request().unwrap();
        assert!(values.is_empty());
        let McpTransport::Stdio { args, env, cwd, .. } = &config.transport else {
            panic!()
        };
        assert_eq!(args[2], "/home/me/My Notes");
        assert_eq!(env["EMPTY"], "");
        assert_eq!(*cwd, None);
        assert_eq!(Form::from_config(&config).to_request().unwrap().0, config);
    }

    #[test]
    fn header_values_travel_apart_and_are_never_shown_again() {
        let form = Form {
            name: "remote".into(),
            transport: McpTransportKind::Http,
            url: "https://h/mcp".into(),
            headers: "Authorization: Bearer abc:def\nX-Kept".into(),
            ..Form::default()
        };
        let (config, values, _) = form.to_request().unwrap();
        assert_eq!(values["Authorization"], "Bearer abc:def");
        assert!(!values.contains_key("X-Kept"));
        let shown = Form::from_config(&config);
        assert_eq!(shown.headers, "Authorization\nX-Kept");
    }

    #[test]
    fn a_secret_variable_is_shown_by_name_only_and_kept_so() {
        let mut config = Form {
            name: "gh".into(),
            command: "gh-mcp".into(),
            ..Form::default()
        }
        .to_request()
        .unwrap()
        .0;
        if let McpTransport::Stdio {
            env, secret_env, ..
        } = &mut config.transport
        {
            env.insert("TZ".into(), "UTC".into());
            secret_env.push("GITHUB_TOKEN".into());
        }
        let form = Form::from_config(&config);
        assert_eq!(form.env, "TZ=UTC\nGITHUB_TOKEN");
        assert_eq!(form.to_request().unwrap().0, config);
    }

    #[test]
    fn sign_in_settings_travel_with_the_secret_apart() {
        let form = Form {
            name: "gh".into(),
            transport: McpTransportKind::Http,
            url: "https://h/mcp".into(),
            client_id: " app-123 ".into(),
            client_secret: "s3cret".into(),
            scopes: "repo  read:user".into(),
            ..Form::default()
        };
        let (config, _, secret) = form.to_request().unwrap();
        assert_eq!(secret.as_deref(), Some("s3cret"));
        assert_eq!(config.oauth.client_id.as_deref(), Some("app-123"));
        assert!(config.oauth.client_secret);
        assert_eq!(config.oauth.scopes, ["repo", "read:user"]);
        // Shown again: the secret's value is not, and saving keeps it.
        let shown = Form::from_config(&config);
        assert!(shown.client_secret.is_empty() && shown.has_client_secret);
        let (again, _, secret) = shown.to_request().unwrap();
        assert_eq!(secret, None);
        assert_eq!(again.oauth, config.oauth);
        // A secret without a client id is refused, naming the field.
        let lone = Form {
            client_id: String::new(),
            ..form
        };
        assert_eq!(lone.to_request().unwrap_err().0, "oauth");
    }

    #[test]
    fn bad_fields_are_named() {
        let form = Form {
            env: "NOEQUALS".into(),
            ..Form::default()
        };
        assert_eq!(form.to_request().unwrap_err().0, "env");
        let form = Form {
            timeout: "soon".into(),
            ..Form::default()
        };
        assert_eq!(form.to_request().unwrap_err().0, "timeoutSecs");
    }
}
