//! Weft's types: scalars, tuples, sequences, functions and type variables, with the classes
//! (`Num`, `Int`, `Float`, `Eq`, `Ord`, `Scalar`) that constrain variables, and type schemes.
//!
//! Plain data shared by inference (`infer`), specialisation (`mono`) and every executor. A
//! class is a set of types, so constraining a variable twice intersects the two sets.

use std::fmt;

/// The scalar types. Every value is built from these with tuples and sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scalar {
    Bool,
    I32,
    I64,
    F32,
    F64,
}

impl Scalar {
    pub const ALL: [Scalar; 5] = [Scalar::Bool, Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64];

    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn is_int(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::I64)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// The float type `/` gives for operands of this type.
    pub fn float_of(self) -> Option<Scalar> {
        match self {
            Scalar::I32 | Scalar::F32 => Some(Scalar::F32),
            Scalar::I64 | Scalar::F64 => Some(Scalar::F64),
            Scalar::Bool => None,
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

pub type TyVar = u32;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    Var(TyVar),
    Scalar(Scalar),
    Tuple(Vec<Type>),
    Seq(Box<Type>),
    Func(Vec<Type>, Box<Type>),
}

impl Type {
    pub const BOOL: Type = Type::Scalar(Scalar::Bool);
    pub const I32: Type = Type::Scalar(Scalar::I32);
    pub const F32: Type = Type::Scalar(Scalar::F32);

    pub fn seq(elem: Type) -> Type {
        Type::Seq(Box::new(elem))
    }

    pub fn func(params: Vec<Type>, ret: Type) -> Type {
        Type::Func(params, Box::new(ret))
    }

    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    pub fn elem(&self) -> Option<&Type> {
        match self {
            Type::Seq(elem) => Some(elem),
            _ => None,
        }
    }

    pub fn contains_func(&self) -> bool {
        match self {
            Type::Func(..) => true,
            Type::Var(_) | Type::Scalar(_) => false,
            Type::Tuple(items) => items.iter().any(Type::contains_func),
            Type::Seq(elem) => elem.contains_func(),
        }
    }

    /// Every variable in the type, in order of first appearance.
    pub fn vars(&self, out: &mut Vec<TyVar>) {
        match self {
            Type::Var(v) => {
                if !out.contains(v) {
                    out.push(*v)
                }
            }
            Type::Scalar(_) => {}
            Type::Tuple(items) => items.iter().for_each(|t| t.vars(out)),
            Type::Seq(elem) => elem.vars(out),
            Type::Func(params, ret) => {
                params.iter().for_each(|t| t.vars(out));
                ret.vars(out)
            }
        }
    }

    /// Replaces variables by `f(var)` where it gives a type.
    pub fn map_vars(&self, f: &mut impl FnMut(TyVar) -> Option<Type>) -> Type {
        match self {
            Type::Var(v) => f(*v).unwrap_or(Type::Var(*v)),
            Type::Scalar(s) => Type::Scalar(*s),
            Type::Tuple(items) => Type::Tuple(items.iter().map(|t| t.map_vars(f)).collect()),
            Type::Seq(elem) => Type::seq(elem.map_vars(f)),
            Type::Func(params, ret) => {
                Type::func(params.iter().map(|t| t.map_vars(f)).collect(), ret.map_vars(f))
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Var(v) => write!(f, "{}", var_name(*v)),
            Type::Scalar(s) => f.write_str(s.name()),
            Type::Tuple(items) => {
                f.write_str("(")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
            Type::Seq(elem) => write!(f, "[{elem}]"),
            Type::Func(params, ret) => {
                if let [param] = params.as_slice()
                    && !matches!(param, Type::Func(..))
                {
                    return write!(f, "{param} -> {ret}");
                }
                f.write_str("(")?;
                for (i, t) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, ") -> {ret}")
            }
        }
    }
}

/// `a`, `b`, ..., `z`, `a1`, ...: readable names for variables in messages.
pub fn var_name(v: TyVar) -> String {
    let letter = (b'a' + (v % 26) as u8) as char;
    if v < 26 { letter.to_string() } else { format!("{letter}{}", v / 26) }
}

/// The set of types a variable may still become. `scalars` is `None` when compound types are
/// allowed too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Class {
    pub scalars: Option<u8>,
    pub eq: bool,
    pub ord: bool,
}

impl Class {
    pub const ANY: Class = Class { scalars: None, eq: false, ord: false };
    pub const EQ: Class = Class { scalars: None, eq: true, ord: false };
    pub const ORD: Class = Class { scalars: None, eq: true, ord: true };

    fn of(scalars: &[Scalar]) -> Class {
        Class { scalars: Some(scalars.iter().fold(0, |m, s| m | s.bit())), eq: true, ord: false }
    }

    pub fn num() -> Class {
        Class::of(&[Scalar::I32, Scalar::I64, Scalar::F32, Scalar::F64])
    }

    pub fn int() -> Class {
        Class::of(&[Scalar::I32, Scalar::I64])
    }

    pub fn float() -> Class {
        Class::of(&[Scalar::F32, Scalar::F64])
    }

    pub fn scalar() -> Class {
        Class::of(&Scalar::ALL)
    }

    /// The intersection, or `None` when no type is in both.
    pub fn meet(self, other: Class) -> Option<Class> {
        let scalars = match (self.scalars, other.scalars) {
            (Some(a), Some(b)) => Some(a & b),
            (a, b) => a.or(b),
        };
        let class = Class { scalars, eq: self.eq || other.eq, ord: self.ord || other.ord };
        match class.scalars {
            Some(0) => None,
            Some(mask) if class.ord && mask == Scalar::Bool.bit() => None,
            _ => Some(class),
        }
    }

    pub fn allows_scalar(self, s: Scalar) -> bool {
        self.scalars.is_none_or(|m| m & s.bit() != 0) && !(self.ord && s == Scalar::Bool)
    }

    pub fn allows_compound(self) -> bool {
        self.scalars.is_none()
    }

    /// The type a variable of this class becomes when nothing else decides it.
    pub fn default_type(self) -> Scalar {
        match self.scalars {
            Some(mask) if mask & Scalar::I32.bit() != 0 => Scalar::I32,
            Some(mask) if mask & Scalar::F32.bit() != 0 => Scalar::F32,
            Some(mask) => Scalar::ALL.into_iter().find(|s| mask & s.bit() != 0).unwrap_or(Scalar::I32),
            None => Scalar::I32,
        }
    }

    /// How the class reads in a signature: `Num`, `Float`, `Ord`, ...
    pub fn name(self) -> Option<&'static str> {
        let named = [
            (Class::num(), "Num"),
            (Class::int(), "Int"),
            (Class::float(), "Float"),
            (Class::scalar(), "Scalar"),
        ];
        if let Some(mask) = self.scalars {
            return named.iter().find(|(c, _)| c.scalars == Some(mask)).map(|(_, n)| *n).or(Some("Num"));
        }
        if self.ord {
            Some("Ord")
        } else if self.eq {
            Some("Eq")
        } else {
            None
        }
    }
}

/// A generalised type: `Num a => (a, a) -> a`. `float_of` pairs `(x, r)` say that `r` is the
/// float type of `x` (from `/`), resolved when `x` is known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scheme {
    pub vars: Vec<(TyVar, Class)>,
    pub float_of: Vec<(TyVar, TyVar)>,
    pub ty: Type,
}

impl Scheme {
    pub fn mono(ty: Type) -> Scheme {
        Scheme { vars: Vec::new(), float_of: Vec::new(), ty }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rename the quantified variables a, b, c... in order of appearance.
        let mut order = Vec::new();
        self.ty.vars(&mut order);
        let rename = |v: TyVar| order.iter().position(|o| *o == v).map(|i| i as TyVar).unwrap_or(v);
        let constraints: Vec<String> = order
            .iter()
            .filter_map(|v| {
                let class = self.vars.iter().find(|(q, _)| q == v)?.1;
                Some(format!("{} {}", class.name()?, var_name(rename(*v))))
            })
            .collect();
        match constraints.len() {
            0 => {}
            1 => write!(f, "{} => ", constraints[0])?,
            _ => write!(f, "({}) => ", constraints.join(", "))?,
        }
        write!(f, "{}", self.ty.map_vars(&mut |v| Some(Type::Var(rename(v)))))
    }
}
