//! Parser for `PMI_process_mapping`, the node layout that Hydra and Slurm publish in the KVS.
//!
//! The value is `(vector,(start,count,ranks),(start,count,ranks),...)`: each block places `ranks`
//! consecutive ranks on each of the `count` nodes starting at node `start`, and the vector repeats
//! cyclically until every rank is placed (launchers.md §2.2). Hydra on one host sends
//! `(vector,(0,1,1))` for any number of ranks, which the cyclic rule turns into "all on node 0".

use crate::PmiError;

/// Node index of every rank `0..size`, decoded from a `PMI_process_mapping` value.
pub fn parse_process_mapping(mapping: &str, size: u32) -> Result<Vec<u32>, PmiError> {
    let bad = |reason: &str| PmiError::BadMapping {
        mapping: mapping.to_owned(),
        reason: reason.to_owned(),
    };
    let inner = mapping
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| bad("not enclosed in parentheses"))?;
    let rest = inner
        .trim_start()
        .strip_prefix("vector")
        .ok_or_else(|| bad("does not start with 'vector'"))?;
    let blocks = parse_blocks(rest).map_err(|reason| bad(&reason))?;
    if blocks.iter().all(|b| b.count == 0 || b.ranks == 0) {
        return Err(bad("places no rank"));
    }
    Ok(place_ranks(&blocks, size))
}

/// One `(start,count,ranks)` triple.
#[derive(Debug, Clone, Copy)]
struct Block {
    start: u32,
    count: u32,
    ranks: u32,
}

/// Parses `,(a,b,c),(d,e,f)` (the text after `vector`).
fn parse_blocks(mut rest: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(blocks);
        }
        let tail = rest
            .strip_prefix(',')
            .ok_or("expected ',' between blocks")?
            .trim_start();
        let tail = tail
            .strip_prefix('(')
            .ok_or("expected '(' to open a block")?;
        let (body, after) = tail.split_once(')').ok_or("block is not closed by ')'")?;
        blocks.push(parse_block(body)?);
        rest = after;
    }
}

fn parse_block(body: &str) -> Result<Block, String> {
    let numbers: Vec<u32> = body
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<u32>()
                .map_err(|_| format!("{:?} is not a node or rank count", n.trim()))
        })
        .collect::<Result<_, _>>()?;
    match numbers[..] {
        [start, count, ranks] => Ok(Block {
            start,
            count,
            ranks,
        }),
        _ => Err(format!("block ({body}) does not have three numbers")),
    }
}

/// Applies the blocks cyclically until `size` ranks are placed.
fn place_ranks(blocks: &[Block], size: u32) -> Vec<u32> {
    let size = size as usize;
    let mut nodes = Vec::with_capacity(size);
    while nodes.len() < size {
        for block in blocks {
            for node in 0..block.count {
                for _ in 0..block.ranks {
                    if nodes.len() == size {
                        return nodes;
                    }
                    nodes.push(block.start.saturating_add(node));
                }
            }
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_launchers_formats() {
        // Hydra, one host, 2 ranks.
        assert_eq!(
            parse_process_mapping("(vector,(0,1,1))", 2).unwrap(),
            [0, 0]
        );
        // Slurm, 1 node x 2 ranks.
        assert_eq!(
            parse_process_mapping("(vector,(0,1,2))", 2).unwrap(),
            [0, 0]
        );
        // Slurm 2 nodes x 2 and Hydra fork-emulated 2 nodes.
        assert_eq!(
            parse_process_mapping("(vector,(0,2,2))", 4).unwrap(),
            [0, 0, 1, 1]
        );
        // Cyclic repetition and several blocks.
        assert_eq!(
            parse_process_mapping("(vector,(0,2,2))", 6).unwrap(),
            [0, 0, 1, 1, 0, 0]
        );
        assert_eq!(
            parse_process_mapping(" ( vector, (0,1,3), (1, 2, 1) ) ", 5).unwrap(),
            [0, 0, 0, 1, 2]
        );
        assert_eq!(
            parse_process_mapping("(vector,(0,1,1))", 0).unwrap(),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn rejects_malformed_mappings() {
        for bad in [
            "",
            "vector,(0,1,1)",
            "(list,(0,1,1))",
            "(vector)",
            "(vector,(0,1))",
            "(vector,(0,1,x))",
            "(vector,(0,1,1)",
            "(vector,(0,1,1",
            "(vector(0,1,1))",
            "(vector,(0,0,0))",
            "(vector,(0,1,-1))",
        ] {
            assert!(parse_process_mapping(bad, 4).is_err(), "{bad:?} accepted");
        }
    }
}
