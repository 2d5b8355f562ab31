//! Parsing `functions.txt` (every MPI function as a C prototype with a kind after each parameter
//! name) and `implemented.txt` (which of them Reflex implements, and how they are called).
//!
//! A spec line: `int MPI_Send(const void *buf:BUF_IN, int count:COUNT, ..., MPI_Comm comm:COMM)`.
//! Errors name the line and the reason.

use std::collections::BTreeMap;

/// One C parameter: its C type (as written, without the name), its name, and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The C type, e.g. `const void *` or `int []` (array suffixes are moved here from the name).
    pub c_type: String,
    /// Parameter name.
    pub name: String,
    /// Kind annotation (`COMM`, `COUNT`, ...).
    pub kind: String,
}

/// One MPI function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Return type (`int`, `double`, `MPI_Aint`, ...).
    pub ret: String,
    /// Full name, `MPI_Send`.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<Param>,
}

/// How an implemented function is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStyle {
    /// Needs an initialised MPI; errors go through an error handler (the default).
    World,
    /// May be called before `MPI_Init`/after `MPI_Finalize` (`MPI_Initialized`, `MPI_Get_version`).
    Anytime,
    /// Returns a non-`int` value and cannot fail (`MPI_Wtime`): called directly.
    Direct,
    /// A tool information interface call (`MPI_T_*`): legal at any time, never through an error
    /// handler, errors returned as the bare `MPI_T_ERR_*` class (`crate::mpit::frame`).
    Tool,
    /// As [`CallStyle::World`], after a fast path (`crate::fast`) that completes the common case
    /// or declines, leaving every check and error to the world path (`MPI_Put`).
    Fast,
}

fn parse_param(text: &str, line_no: usize) -> Result<Param, String> {
    if text.starts_with("...") {
        // C varargs (MPI_Pcontrol): kept in the prototype, invisible to Rust (the x86-64 SysV
        // callee may ignore trailing variadic arguments).
        return Ok(Param {
            c_type: "...".into(),
            name: String::new(),
            kind: "VARARGS".into(),
        });
    }
    let (decl, kind) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("line {line_no}: parameter `{text}` has no `:KIND`"))?;
    let decl = decl.trim();
    let (mut ty, mut name) = match decl.rfind(['*', ' ']) {
        Some(i) => (
            decl[..=i].trim().to_string(),
            decl[i + 1..].trim().to_string(),
        ),
        None => {
            return Err(format!(
                "line {line_no}: cannot split `{decl}` into type and name"
            ))
        }
    };
    if let Some(i) = name.find('[') {
        ty = format!("{ty} {}", &name[i..]);
        name.truncate(i);
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("line {line_no}: bad parameter name in `{decl}`"));
    }
    Ok(Param {
        c_type: ty,
        name,
        kind: kind.trim().to_string(),
    })
}

/// Parses one prototype line.
pub fn parse_function(line: &str, line_no: usize) -> Result<Function, String> {
    let open = line
        .find('(')
        .ok_or_else(|| format!("line {line_no}: no `(`"))?;
    let close = line
        .rfind(')')
        .ok_or_else(|| format!("line {line_no}: no `)`"))?;
    let head = line[..open].trim();
    let (ret, name) = head
        .rsplit_once(' ')
        .ok_or_else(|| format!("line {line_no}: no return type"))?;
    let inner = line[open + 1..close].trim();
    let params = if inner.is_empty() || inner == "void" {
        Vec::new()
    } else {
        inner
            .split(',')
            .map(|p| parse_param(p.trim(), line_no))
            .collect::<Result<_, _>>()?
    };
    Ok(Function {
        ret: ret.trim().to_string(),
        name: name.trim().to_string(),
        params,
    })
}

/// Parses the whole function list (comments with `#`, blank lines ignored).
pub fn parse_functions(text: &str) -> Result<Vec<Function>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| parse_function(l.trim(), i + 1))
        .collect()
}

/// Parses `implemented.txt`: `MPI_Name [anytime|direct]` per line.
pub fn parse_implemented(text: &str) -> Result<BTreeMap<String, CallStyle>, String> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default().to_string();
        let style = match words.next() {
            None => CallStyle::World,
            Some("anytime") => CallStyle::Anytime,
            Some("direct") => CallStyle::Direct,
            Some("fast") => CallStyle::Fast,
            Some("tool") => CallStyle::Tool,
            Some(other) => {
                return Err(format!(
                    "implemented.txt line {}: unknown call style `{other}`",
                    i + 1
                ))
            }
        };
        if out.insert(name.clone(), style).is_some() {
            return Err(format!(
                "implemented.txt line {}: {name} listed twice",
                i + 1
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pointers_arrays_and_kinds() {
        let f = parse_function(
            "int MPI_Waitall(int count:COUNT, MPI_Request array_of_requests[]:REQUEST_ARRAY, MPI_Status *array_of_statuses:STATUS_ARRAY_OUT)",
            1,
        )
        .unwrap();
        assert_eq!(f.name, "MPI_Waitall");
        assert_eq!(
            f.params[1],
            Param {
                c_type: "MPI_Request []".into(),
                name: "array_of_requests".into(),
                kind: "REQUEST_ARRAY".into()
            }
        );
        assert_eq!(f.params[2].c_type, "MPI_Status *");
        let g = parse_function("double MPI_Wtime(void)", 2).unwrap();
        assert!(g.params.is_empty());
        let h = parse_function("int MPI_Group_range_incl(MPI_Group group:GROUP, int n:INT_IN, int ranges[][3]:OTHER, MPI_Group *newgroup:GROUP_OUT)", 3).unwrap();
        assert_eq!(h.params[2].c_type, "int [][3]");
    }

    #[test]
    fn rejects_missing_kinds() {
        assert!(parse_function("int MPI_X(int a)", 7)
            .unwrap_err()
            .contains("line 7"));
    }
}
